def first(x)
  x + 1
end

class Good
  def ok
    first(1)
  end
end

def broken(x
  x +
end
