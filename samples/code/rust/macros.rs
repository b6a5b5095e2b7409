extern crate serde;

use log;
use std::fmt as formatting;
use std::io::*;

macro_rules! cents {
    ($amount:expr) => {
        $amount * 100
    };
}

pub trait Audited: Refundable + std::fmt::Debug {
    fn audit(&self) -> String;
}

impl Receipt {
    pub const VERSION: u32 = 2;

    pub fn parse(text: &str) -> u64 {
        text.parse::<u64>().unwrap_or(cents!(1))
    }
}
