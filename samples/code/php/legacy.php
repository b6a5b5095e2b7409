<?php

namespace App\Legacy {
    use App\Models\{Payment, Refund as RefundModel};

    require 'bootstrap.php';
    require_once __DIR__ . '/helpers.php';
    include "templates.php";
    include_once 'macros.php';

    class LegacyRefunds
    {
        use Audited;

        public function run(): void
        {
            legacy_refund(new RefundModel());
        }
    }
}
