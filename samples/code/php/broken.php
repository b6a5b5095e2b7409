<?php

function first($x)
{
    return $x + 1;
}

class Good
{
    public function ok()
    {
        return first(1);
    }
}

function broken($x
{
    return $x;
}
