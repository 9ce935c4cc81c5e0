local Cart = {}
Cart.__index = Cart

function Cart.new()
  return setmetatable({ items = {} }, Cart)
end

function Cart:add(name, price, qty)
  table.insert(self.items, { name = name, price = price, qty = qty or 1 })
end

function Cart:count()
  return #self.items
end

function Cart:total()
  return 0
end

return Cart
