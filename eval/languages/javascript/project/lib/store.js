class Store {
  constructor() {
    this.items = new Map();
  }

  add(name, price, qty = 1) {
    this.items.set(name, { name, price, qty });
  }

  remove(name) {
    this.items.delete(name);
  }

  count() {
    return this.items.size;
  }
}

module.exports = { Store };
