import Foundation

/// What Linux's `/proc` says a process has used, for the load tools and benchmarks that report
/// CPU and memory by process.
public enum ProcessUsage {
  /// CPU seconds (user and system) process `pid` has used (`"self"`: this one); 0 if unreadable.
  public static func cpuSeconds(_ pid: String) -> Double {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
      let close = stat.lastIndex(of: ")")
    else { return 0 }
    // After the command's closing parenthesis: state is field 3, utime 14 and stime 15, in
    // clock ticks (USER_HZ, 100 on Linux).
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / 100
  }

  /// A kB field of `/proc/<pid>/status` (`VmHWM`, `VmRSS`); 0 if unreadable.
  public static func statusKilobytes(_ field: String, of pid: String) -> Double {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
      let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") })
    else { return 0 }
    return Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
  }
}
