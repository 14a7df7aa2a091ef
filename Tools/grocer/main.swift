import Foundation
import GrocerCore
import GrocerOps
import GrocerRuntime

// `grocer help` lists the commands; see GrocerOps.usage and README.md ("Operating it").
let status = await GrocerOps.main(
  arguments: Array(CommandLine.arguments.dropFirst()), settings: Settings(), console: .standard)
exit(status)
