import CMicroHTTPD
import Foundation
import GrocerHTTP

// The C callbacks handed to libmicrohttpd. They capture nothing: `cls` is an unretained
// `ServerCore` (kept alive by `HTTPServer` until the daemon stops), used borrowed (a reference
// count on it would be a write every transport thread makes to one cache line), and `*req_cls`
// a retained `RequestContext`. They live outside any `main.swift` so they are not main-actor
// isolated.

/// MHD_OPTION_URI_LOG_CALLBACK: the first sight of a request; keeps the raw target (MHD decodes
/// the path it passes later, and we want the query and the encoded segments).
func grocerURILog(
  _ cls: UnsafeMutableRawPointer?, _ uri: UnsafePointer<CChar>?, _ connection: OpaquePointer?
) -> UnsafeMutableRawPointer? {
  let context = uri.map { RequestContext(target: $0) } ?? RequestContext()
  context.connectionState = connection.flatMap(connectionState)
  return Unmanaged.passRetained(context).toOpaque()
}

/// The `ConnectionState` MHD keeps in the connection's socket context, if any.
func connectionState(_ connection: OpaquePointer) -> ConnectionState? {
  grocer_mhd_socket_context(connection).map {
    Unmanaged<ConnectionState>.fromOpaque($0).takeUnretainedValue()
  }
}

/// MHD_OPTION_NOTIFY_CONNECTION: registers each TCP connection with the `ConnectionGuard` (which
/// enforces the request deadline and the connection limit) and forgets it when MHD closes it.
func grocerNotifyConnection(
  _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
  _ socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ code: MHD_ConnectionNotificationCode
) {
  guard let cls, let connection, let socketContext else { return }
  let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
  if code.rawValue == 0 {  // MHD_CONNECTION_NOTIFY_STARTED
    let state = core.connections.opened(fd: grocer_mhd_connection_fd(connection))
    socketContext.pointee = Unmanaged.passRetained(state).toOpaque()
  } else if let raw = socketContext.pointee {
    socketContext.pointee = nil
    core.connections.closed(Unmanaged<ConnectionState>.fromOpaque(raw).takeRetainedValue())
    core.load.release(grocer_mhd_connection_daemon(connection))
  }
}

/// MHD_AccessHandlerCallback.
func grocerAccessHandler(
  _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?,
  _ method: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?, _ uploadData: UnsafePointer<CChar>?,
  _ uploadSize: UnsafeMutablePointer<Int>?, _ requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> MHD_Result {
  guard let cls, let connection, let uploadSize, let requestContext else { return .NO }
  let context: RequestContext
  if let raw = requestContext.pointee {
    context = Unmanaged<RequestContext>.fromOpaque(raw).takeUnretainedValue()
  } else {
    context = url.map { RequestContext(target: $0) } ?? RequestContext()
    context.connectionState = connectionState(connection)
    requestContext.pointee = Unmanaged.passRetained(context).toOpaque()
  }
  return Unmanaged<ServerCore>.fromOpaque(cls)._withUnsafeGuaranteedRef { core in
    core.handle(connection, context, method: method, uploadData: uploadData, uploadSize: uploadSize)
  }
}

/// MHD_OPTION_NOTIFY_COMPLETED: releases the request's context; the connection's next request
/// gets a fresh deadline.
func grocerRequestCompleted(
  _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
  _ requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ reason: MHD_RequestTerminationCode
) {
  guard let cls, let requestContext, let raw = requestContext.pointee else { return }
  requestContext.pointee = nil
  let context = Unmanaged<RequestContext>.fromOpaque(raw).takeRetainedValue()
  Unmanaged<ServerCore>.fromOpaque(cls)._withUnsafeGuaranteedRef { $0.completed(context) }
}

/// MHD_KeyValueIteratorN: appends each request header to the `HTTPHeaders` behind `cls`.
func grocerHeaderIterator(
  _ cls: UnsafeMutableRawPointer?, _ kind: MHD_ValueKind, _ key: UnsafePointer<CChar>?, _ keySize: Int,
  _ value: UnsafePointer<CChar>?, _ valueSize: Int
) -> MHD_Result {
  guard let cls, let key else { return .YES }
  let headers = cls.assumingMemoryBound(to: HTTPHeaders.self)
  let name = String(decoding: UnsafeRawBufferPointer(start: key, count: keySize), as: UTF8.self)
  let text =
    value.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: valueSize), as: UTF8.self) } ?? ""
  headers.pointee.add(name, text)
  return .YES
}

/// MHD_KeyValueIteratorN: counts the `Content-Length` fields into the `Int` behind `cls`.
func grocerContentLengthCounter(
  _ cls: UnsafeMutableRawPointer?, _ kind: MHD_ValueKind, _ key: UnsafePointer<CChar>?, _ keySize: Int,
  _ value: UnsafePointer<CChar>?, _ valueSize: Int
) -> MHD_Result {
  guard let cls, let key, keySize == 14 else { return .YES }
  if strncasecmp(key, "Content-Length", 14) == 0 { cls.assumingMemoryBound(to: Int.self).pointee += 1 }
  return .YES
}

/// MHD_ContentReaderCallback of a streamed response: `cls` is its retained `StreamContext`.
func grocerStreamRead(
  _ cls: UnsafeMutableRawPointer?, _ position: UInt64, _ buffer: UnsafeMutablePointer<CChar>?, _ max: Int
) -> Int {
  guard let cls, let buffer else { return -2 }  // MHD_CONTENT_READER_END_WITH_ERROR
  return Unmanaged<StreamContext>.fromOpaque(cls).takeUnretainedValue().read(into: buffer, max: max)
}

/// MHD_ContentReaderFreeCallback: the response is gone, and with it the stream's connection.
func grocerStreamFree(_ cls: UnsafeMutableRawPointer?) {
  guard let cls else { return }
  let context = Unmanaged<StreamContext>.fromOpaque(cls).takeRetainedValue()
  context.core.streamEnded(context)
}
