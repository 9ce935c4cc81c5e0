local M = {}

-- Removes leading whitespace.
function M.trim(s)
  return (s:gsub("^%s+", ""))
end

function M.clamp(x, lo, hi)
  return math.max(lo, math.min(hi, x))
end

function M.mean(xs)
  local total = 0
  for _, x in ipairs(xs) do
    total = total + x
  end
  return total / #xs
end

return M
