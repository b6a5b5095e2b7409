#pragma once

#include <memory>
#include <string>

using std::string;
using namespace payments;

#define RECEIPT_VERSION 2
#define RECEIPT_LINE(n) ((n) * 80)

typedef unsigned long receipt_id;

class Receipt {
 public:
  static constexpr int kMaxLines = 40;

  // The line buffer, owned by the receipt.
  char* lines() { return buffer_; }

  const string& title() const { return title_; }

 private:
  char* buffer_;
  string title_;
};

std::unique_ptr<Receipt> make_receipt() {
  auto receipt = std::make_unique<Receipt>();
  auto lines = narrow<int>(Receipt::kMaxLines);
  auto* copy = new Receipt();
  auto* other = new payments::Receipt();
  return receipt;
}
