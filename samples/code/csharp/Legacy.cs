namespace Example.Legacy
{
    public class LegacyRefunds
    {
        public void Run() => Refunds.Apply();
    }
}
