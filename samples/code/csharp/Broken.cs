public class Good
{
    static int First(int x)
    {
        return x + 1;
    }

    int Ok()
    {
        return First(1);
    }

    int Broken(int x
    {
        return x;
    }
}
