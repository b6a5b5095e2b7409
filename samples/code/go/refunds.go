package payments

import (
	"errors"
	"fmt"

	gw "example.com/payments/gateway"
)

// MaxRefundCents bounds a single refund.
const MaxRefundCents = 100000

// Refunder refunds payments.
type Refunder interface {
	Refund(p Payment, amount int) (Refund, error)
}

// RefundService applies refunds through a gateway.
type RefundService struct {
	BaseService
	gateway gw.Client
}

type RefundID = string

// Refund refunds amount cents of p.
func (s *RefundService) Refund(p Payment, amount int) (Refund, error) {
	if err := s.validate(amount); err != nil {
		return Refund{}, err
	}
	return Refund{Amount: amount}, nil
}

func (s *RefundService) validate(amount int) error {
	if amount > MaxRefundCents {
		return errors.New(fmt.Sprintf("refund of %d is too large", amount))
	}
	return nil
}

// RefundAll refunds every payment.
func RefundAll(payments []Payment) []Refund {
	type result struct{ refund Refund }
	out := make([]Refund, 0, len(payments))
	for _, p := range payments {
		out = append(out, gw.Charge(p, -p.Amount))
	}
	return out
}
