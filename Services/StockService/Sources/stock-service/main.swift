print("stock-service: not yet")
