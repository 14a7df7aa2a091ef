import GrocerOps

print(GrocerOps.usage)
