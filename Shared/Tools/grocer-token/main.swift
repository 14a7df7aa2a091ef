print("grocer-token: not yet")
