#include <string>
#include <vector>
#include "gateway.hpp"

namespace payments {

constexpr long kMaxRefundCents = 100000;

// Applies refunds through a gateway.
class RefundService : public BaseService {
 public:
  explicit RefundService(Gateway* gateway) : gateway_(gateway) {}

  Refund apply(long amount) {
    this->validate(amount);
    return Refund{amount};
  }

  struct Receipt {
    std::string render() const { return std::to_string(1); }
  };

 private:
  void validate(long amount);
  Gateway* gateway_;
};

// Rejects refunds above the limit.
void RefundService::validate(long amount) {
  if (amount > kMaxRefundCents) {
    throw std::invalid_argument("refund too large");
  }
}

std::vector<Refund> refund_all(const std::vector<Payment>& payments) {
  std::vector<Refund> out;
  for (const auto& p : payments) {
    out.push_back(gateway::charge(p, -p.amount));
  }
  return out;
}

using RefundId = std::string;

}  // namespace payments
