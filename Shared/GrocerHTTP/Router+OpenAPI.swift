extension Router {
  /// Adds `GET /openapi.json` (no auth), answering the service's OpenAPI description: `own`, the
  /// service's part (embedded in its binary), merged here, once, with the part every service
  /// shares (`OpenAPIDocument`).
  ///
  /// Throws when `own` is not a JSON object or gives a member the shared part gives too.
  public mutating func addOpenAPIDocument(_ own: [UInt8]) throws {
    let document = try OpenAPIDocument.merged(own)
    get(
      "/openapi.json",
      { _ in .json(bytes: document, headers: ["Cache-Control": "public, max-age=300"]) })
  }
}
