package io.github.te4j;

/**
 * Operations captured from an {@link OpStream} into a CUDA graph, replayed with {@link #launch()}.
 *
 * @since 0.1
 */
public final class CapturedGraph extends NativeResource
{
    private final OpStream stream;
    private final long handle;

    CapturedGraph(final OpStream stream, final long handle)
    {
        super("CapturedGraph");
        this.stream = stream;
        this.handle = handle;
    }

    /**
     * Enqueues one replay on the stream it was captured from.
     *
     * @since 0.1
     */
    public void launch()
    {
        final java.util.concurrent.locks.Lock l = enter();
        try
        {
            stream.launchGraph(handle);
        }
        finally
        {
            l.unlock();
        }
    }

    @Override
    void release()
    {
        stream.destroyGraph(handle);
    }
}
