import Foundation

/// One result row: values by column index or by column name.
///
/// Accessors throw `StorageError.column` on a missing column or a value of another type instead
/// of trapping, so a schema mismatch becomes an error the caller can log.
public struct SQLRow: Sendable {
  /// The column names of the statement, shared by every row of one result (made by the engine
  /// once per statement, so `package`).
  package final class Columns: Sendable {
    package let names: [String]
    let indexByName: [String: Int]

    package init(names: [String]) {
      self.names = names
      var index: [String: Int] = [:]
      for (position, name) in names.enumerated() where index[name] == nil {
        index[name] = position
      }
      self.indexByName = index
    }
  }

  let columns: Columns
  /// The values in column order.
  public let values: [SQLValue]

  package init(columns: Columns, values: [SQLValue]) {
    self.columns = columns
    self.values = values
  }

  /// The column names in order.
  public var columnNames: [String] { columns.names }

  public func value(_ index: Int) throws -> SQLValue {
    guard values.indices.contains(index) else {
      throw StorageError.column("no column at index \(index) (row has \(values.count))")
    }
    return values[index]
  }

  public func value(_ name: String) throws -> SQLValue {
    guard let index = columns.indexByName[name] else {
      throw StorageError.column("no column named \(name)")
    }
    return values[index]
  }

  public func isNull(_ index: Int) throws -> Bool { try value(index) == .null }
  public func isNull(_ name: String) throws -> Bool { try value(name) == .null }

  public func int64(_ index: Int) throws -> Int64 { try Self.int64(value(index), "\(index)") }
  public func int64(_ name: String) throws -> Int64 { try Self.int64(value(name), name) }
  public func int(_ index: Int) throws -> Int { Int(try int64(index)) }
  public func int(_ name: String) throws -> Int { Int(try int64(name)) }
  public func bool(_ index: Int) throws -> Bool { try int64(index) != 0 }
  public func bool(_ name: String) throws -> Bool { try int64(name) != 0 }
  public func double(_ index: Int) throws -> Double { try Self.double(value(index), "\(index)") }
  public func double(_ name: String) throws -> Double { try Self.double(value(name), name) }
  public func string(_ index: Int) throws -> String { try Self.string(value(index), "\(index)") }
  public func string(_ name: String) throws -> String { try Self.string(value(name), name) }
  public func blob(_ index: Int) throws -> [UInt8] { try Self.blob(value(index), "\(index)") }
  public func blob(_ name: String) throws -> [UInt8] { try Self.blob(value(name), name) }
  public func data(_ index: Int) throws -> Data { Data(try blob(index)) }
  public func data(_ name: String) throws -> Data { Data(try blob(name)) }

  public func optionalInt64(_ index: Int) throws -> Int64? {
    try isNull(index) ? nil : int64(index)
  }
  public func optionalInt64(_ name: String) throws -> Int64? {
    try isNull(name) ? nil : int64(name)
  }
  public func optionalInt(_ index: Int) throws -> Int? { try optionalInt64(index).map { Int($0) } }
  public func optionalInt(_ name: String) throws -> Int? { try optionalInt64(name).map { Int($0) } }
  public func optionalDouble(_ index: Int) throws -> Double? {
    try isNull(index) ? nil : double(index)
  }
  public func optionalDouble(_ name: String) throws -> Double? {
    try isNull(name) ? nil : double(name)
  }
  public func optionalString(_ index: Int) throws -> String? {
    try isNull(index) ? nil : string(index)
  }
  public func optionalString(_ name: String) throws -> String? {
    try isNull(name) ? nil : string(name)
  }
  public func optionalBlob(_ index: Int) throws -> [UInt8]? {
    try isNull(index) ? nil : blob(index)
  }
  public func optionalBlob(_ name: String) throws -> [UInt8]? {
    try isNull(name) ? nil : blob(name)
  }

  private static func int64(_ value: SQLValue, _ column: String) throws -> Int64 {
    switch value {
    case .integer(let number): return number
    case .real(let number) where number.rounded() == number && abs(number) < 9e18: return Int64(number)
    default: throw StorageError.column("column \(column) is \(value.kind), not an integer")
    }
  }

  private static func double(_ value: SQLValue, _ column: String) throws -> Double {
    switch value {
    case .real(let number): return number
    case .integer(let number): return Double(number)
    default: throw StorageError.column("column \(column) is \(value.kind), not a real")
    }
  }

  private static func string(_ value: SQLValue, _ column: String) throws -> String {
    guard case .text(let text) = value else {
      throw StorageError.column("column \(column) is \(value.kind), not text")
    }
    return text
  }

  private static func blob(_ value: SQLValue, _ column: String) throws -> [UInt8] {
    switch value {
    case .blob(let bytes): return bytes
    case .text(let text): return Array(text.utf8)
    default: throw StorageError.column("column \(column) is \(value.kind), not a blob")
    }
  }
}

extension SQLValue {
  var kind: String {
    switch self {
    case .null: "null"
    case .integer: "integer"
    case .real: "real"
    case .text: "text"
    case .blob: "blob"
    }
  }
}
