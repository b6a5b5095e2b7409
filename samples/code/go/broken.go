package payments

func First(x int) int {
	return x + 1
}

type Good struct{}

func (g Good) Ok() int {
	return First(1)
}

func Broken(x int {
	return x
}
