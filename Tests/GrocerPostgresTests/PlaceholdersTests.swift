import Testing

@testable import GrocerPostgres

/// One SQL text for both engines: `?` becomes `$n`, except where it is not a placeholder.
@Suite struct PlaceholdersTests {
  @Test func placeholdersAreNumberedInOrder() {
    let (sql, count) = Placeholders.numbered("SELECT a FROM t WHERE b = ? AND c IN (?, ?) LIMIT ?")
    #expect(sql == "SELECT a FROM t WHERE b = $1 AND c IN ($2, $3) LIMIT $4")
    #expect(count == 4)
  }

  @Test func literalsIdentifiersAndCommentsKeepTheirQuestionMarks() {
    let (sql, count) = Placeholders.numbered(
      """
      SELECT 'why?', 'it''s ?', "odd?col" FROM t -- really?
      WHERE x = ? /* and ? here */ AND y - 1 = ? / 2
      """)
    #expect(
      sql == """
        SELECT 'why?', 'it''s ?', "odd?col" FROM t -- really?
        WHERE x = $1 /* and ? here */ AND y - 1 = $2 / 2
        """)
    #expect(count == 2)
  }

  @Test func aStatementWithoutPlaceholdersIsUnchanged() {
    #expect(Placeholders.numbered("SELECT count(*) FROM outbox") == ("SELECT count(*) FROM outbox", 0))
  }
}
