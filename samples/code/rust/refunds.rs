use std::collections::HashMap;
use crate::gateway::{charge, Gateway as Gw};

/// Largest refund accepted, in cents.
pub const MAX_REFUND_CENTS: u64 = 100_000;

pub trait Refundable {
    fn refund(&mut self, amount: u64) -> Result<Refund, RefundError>;
}

/// Applies refunds through a gateway.
#[derive(Debug)]
pub struct RefundService {
    gateway: Gw,
    seen: HashMap<u64, u64>,
}

pub enum RefundError {
    TooLarge(u64),
}

impl RefundService {
    pub fn new(gateway: Gw) -> Self {
        RefundService { gateway, seen: HashMap::new() }
    }

    fn validate(&self, amount: u64) -> Result<(), RefundError> {
        if amount > MAX_REFUND_CENTS {
            return Err(RefundError::TooLarge(amount));
        }
        Ok(())
    }
}

impl Refundable for RefundService {
    fn refund(&mut self, amount: u64) -> Result<Refund, RefundError> {
        self.validate(amount)?;
        Ok(Refund { amount })
    }
}

pub fn refund_all(payments: &[Payment]) -> Vec<Refund> {
    fn one(p: &Payment) -> Refund {
        charge(p, p.amount)
    }
    payments.iter().map(one).collect()
}

pub mod receipts {
    pub type ReceiptId = String;

    pub fn render(id: &str) -> String {
        format!("receipt {}", id)
    }
}
