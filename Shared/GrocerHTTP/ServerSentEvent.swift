/// The text/event-stream framing (WHATWG HTML, "Server-sent events"): fields of one event on
/// their own lines, a blank line after each event; a line starting with `:` is a comment.
public enum ServerSentEvent {
  /// One event: `id:` (what `Last-Event-ID` sends back on reconnecting) and `data:`, which must
  /// hold no line break (JSON as we write it holds none).
  public static func event(id: String, data: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(data.count + id.utf8.count + 16)
    out.append(contentsOf: "id: ".utf8)
    out.append(contentsOf: id.utf8)
    out.append(contentsOf: "\ndata: ".utf8)
    out.append(contentsOf: data)
    out.append(contentsOf: "\n\n".utf8)
    return out
  }

  /// An event of type `name` without an `id:` (the client's last event id stays as it was).
  public static func event(named name: String, data: [UInt8]) -> [UInt8] {
    Array("event: \(name)\ndata: ".utf8) + data + Array("\n\n".utf8)
  }

  /// A comment (a heartbeat: proxies and clients see the connection is alive).
  public static func comment(_ text: String) -> [UInt8] { Array(": \(text)\n\n".utf8) }

  /// How long a client waits before reconnecting, in milliseconds.
  public static func retry(milliseconds: Int) -> [UInt8] { Array("retry: \(milliseconds)\n\n".utf8) }
}
