require "json"
require_relative "gateway"

module Payments
  MAX_REFUND_CENTS = 100_000

  # Applies refunds through a gateway.
  class RefundService < BaseService
    include Auditable

    def initialize(gateway)
      @gateway = gateway
    end

    def refund(payment, amount)
      self.validate(amount)
      Refund.new(payment.id, amount)
    end

    def self.build
      new(Gateway.default)
    end

    private

    def validate(amount)
      raise ArgumentError, "refund too large" if amount > MAX_REFUND_CENTS
    end
  end

  def self.refund_all(payments)
    payments.map { |p| Gateway.charge(p, -p.amount) }
  end
end

def receipt_json(id)
  JSON.generate(id: id)
end
