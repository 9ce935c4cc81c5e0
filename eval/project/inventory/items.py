class Item:
    def __init__(self, name, price, qty=1):
        self.name = name
        self.price = price
        self.qty = qty


def total_value(items):
    total = 0
    for item in items:
        total += item.price * item.qty
    return total


def find_item(items, name):
    for item in items:
        if item.name == name:
            return item
    return None
