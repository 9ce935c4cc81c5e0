from inventory.items import Item


class Store:
    def __init__(self):
        self.items = {}

    def add(self, name, price, qty=1):
        self.items[name] = Item(name, price, qty)

    def remove(self, name):
        if name in self.items:
            del self.items[name]

    def count(self):
        return len(self.items)
