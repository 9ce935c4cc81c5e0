from inventory.mathutil import mean


def average_price(items):
    return mean([item.price for item in items])


def summary(store):
    return f"{store.count()} items"


def count(items, name):
    return sum(1 for item in items if item.name == name)
