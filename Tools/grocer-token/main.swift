import Foundation
import GrocerAuth
import GrocerCore
import GrocerRuntime

// Prints a local HS256 token, and nothing else, on stdout. Bad arguments: usage on stderr, exit 2.
do {
  switch try TokenCommand.parse(arguments: Array(CommandLine.arguments.dropFirst())) {
  case .help:
    print(TokenCommand.usage)
  case .mint(let command):
    print(command.token(settings: Settings(), now: Date()))
  }
} catch {
  FileHandle.standardError.write(Data("grocer-token: \(error.message)\n\n\(TokenCommand.usage)\n".utf8))
  exit(2)
}
