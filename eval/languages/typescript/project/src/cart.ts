export interface Item {
  name: string;
  price: number;
  qty: number;
}

export class Cart {
  private items: Item[] = [];

  add(name: string, price: number, qty: number = 1): void {
    this.items.push({ name, price, qty });
  }

  remove(name: string): void {
    this.items = this.items.filter((i) => i.name !== name);
  }

  count(): number {
    return this.items.length;
  }

  total(): number {
    return 0;
  }
}
