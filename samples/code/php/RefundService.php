<?php

namespace App\Payments;

use App\Gateway\Client;
use App\Models\Refund as RefundModel;
use function App\Gateway\charge;

const MAX_REFUND_CENTS = 100000;

interface Refundable
{
    public function refund(int $amount): RefundModel;
}

/** Applies refunds through a gateway. */
class RefundService extends BaseService implements Refundable
{
    public const LIMIT = 3;

    public function __construct(private Client $client)
    {
    }

    public function refund(int $amount): RefundModel
    {
        $this->validate($amount);
        return new RefundModel($amount);
    }

    private function validate(int $amount): void
    {
        if ($amount > MAX_REFUND_CENTS) {
            throw new \InvalidArgumentException('refund too large');
        }
    }
}

function refund_all(array $payments): array
{
    return array_map(fn ($p) => charge($p, -$p->amount), $payments);
}

trait Audited
{
    public static function audit(string $event): void
    {
        Logger::info($event);
    }
}
