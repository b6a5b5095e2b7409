package payments

// AuditedRefunder refunds and keeps an audit trail.
type AuditedRefunder interface {
	Refunder
	Audit(event string)
}
