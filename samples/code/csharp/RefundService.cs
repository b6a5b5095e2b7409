using System;
using System.Collections.Generic;
using Gw = Example.Gateway;

namespace Example.Payments;

/// <summary>Something that can be refunded.</summary>
public interface IRefundable
{
    Refund Refund(long amount);
}

/// <summary>Applies refunds through a gateway.</summary>
public class RefundService : BaseService, IRefundable
{
    public const long MaxRefundCents = 100_000;

    private readonly Gw.Client _gateway;

    public RefundService(Gw.Client gateway)
    {
        _gateway = gateway;
    }

    public Refund Refund(long amount)
    {
        this.Validate(amount);
        return new Refund(amount);
    }

    private void Validate(long amount)
    {
        if (amount > MaxRefundCents)
        {
            throw new ArgumentException("refund too large");
        }
    }

    public static List<Refund> RefundAll(IEnumerable<Payment> payments)
    {
        Refund One(Payment p) => Gw.Charges.Charge(p, -p.Amount);

        var result = new List<Refund>();
        foreach (var p in payments)
        {
            result.Add(One(p));
        }
        return result;
    }

    public class Receipt
    {
        public string Render() => Format("receipt");
    }
}

public enum RefundState { Pending, Done }

public struct Money
{
    public long Cents;
}
