extension Router {
  /// Adds `GET /openapi.json` (no auth), answering `document` (the service's OpenAPI description,
  /// embedded in the binary) from memory on the transport's thread.
  public mutating func addOpenAPIDocument(_ document: [UInt8]) {
    get(
      "/openapi.json",
      .sync { _ in .json(bytes: document, headers: ["Cache-Control": "public, max-age=300"]) })
  }
}
