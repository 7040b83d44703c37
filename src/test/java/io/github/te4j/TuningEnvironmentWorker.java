package io.github.te4j;

/** Child JVM of {@link TuningEnvironmentTest}: creates a host P2P transport and says whether it could. */
public final class TuningEnvironmentWorker
{
    private TuningEnvironmentWorker()
    {
    }

    public static void main(final String[] args)
    {
        try (TransferEngine engine = TransferEngine.builder().platform(Platform.HOST).build())
        {
            engine.getOrCreateP2pTransport(2);
            System.out.println("ACCEPTED");
        }
        catch (final Te4jException e)
        {
            System.out.println("REFUSED: " + e.getMessage());
        }
    }
}
