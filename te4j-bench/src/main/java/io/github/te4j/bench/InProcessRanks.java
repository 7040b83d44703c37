package io.github.te4j.bench;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.IntFunction;

/**
 * Every rank a thread of this JVM with an engine of its own, as the in-process tests run two
 * ranks: they meet through the same rendezvous as child JVMs would, and their windows map each
 * other directly (one process). Ranks that share a GPU then share one CUDA context, so a round
 * trip between them times te4j instead of the GPU switching between two processes' contexts.
 * A thread cannot be killed: every wait inside a rank is bounded by --timeout, and the threads
 * are daemons, so one left running never holds the JVM.
 */
final class InProcessRanks implements LaunchedRanks
{
    /** Exit code of a rank that threw (never an exit code of BenchMain). */
    static final int THREW = -2;
    private static final int RUNNING = Integer.MIN_VALUE;

    private final List<Thread> threads = new ArrayList<>();
    private final AtomicIntegerArray exitCodes;
    private final AtomicReferenceArray<String> outputs;

    /** Starts {@code count} ranks, rank r with the command line {@code args.apply(r)}. */
    InProcessRanks(final int count, final IntFunction<List<String>> args)
    {
        exitCodes = new AtomicIntegerArray(count);
        outputs = new AtomicReferenceArray<>(count);
        for (int r = 0; r < count; r++)
        {
            exitCodes.set(r, RUNNING);
            final int rank = r;
            final List<String> a = args.apply(r);
            final Thread t = new Thread(() -> runRank(rank, a), "te4j-bench-rank-" + r);
            t.setDaemon(true);
            threads.add(t);
        }
        threads.forEach(Thread::start);
    }

    private void runRank(final int rank, final List<String> args)
    {
        int code;
        String output = "";
        try
        {
            code = new BenchRank(BenchMain.configOf(args)).run();
        }
        catch (final Throwable e)  // a rank's failure is reported by the launcher, never lost with its thread
        {
            final StringWriter w = new StringWriter();
            e.printStackTrace(new PrintWriter(w));
            output = w.toString();
            code = THREW;
        }
        outputs.set(rank, output);
        exitCodes.set(rank, code);
    }

    @Override
    public boolean anyAlive()
    {
        return threads.stream().anyMatch(Thread::isAlive);
    }

    @Override
    public boolean crashed()
    {
        for (int r = 0; r < threads.size(); r++)
        {
            final int c = exitCodes.get(r);
            if (c != RUNNING && c != 0 && !(r == 0 && c == BenchMain.EXIT_FAILED))
            {
                return true;
            }
        }
        return false;
    }

    @Override
    public List<Result> await(final Duration timeout) throws InterruptedException
    {
        final long deadline = System.nanoTime() + timeout.toNanos();
        for (final Thread t : threads)
        {
            final long left = deadline - System.nanoTime();
            if (left > 0)
            {
                t.join(Math.max(1, left / 1_000_000));
            }
        }
        final List<Result> out = new ArrayList<>();
        for (int r = 0; r < threads.size(); r++)
        {
            final int c = exitCodes.get(r);
            out.add(c == RUNNING
                ? new Result(r, -1, "[still running after " + timeout.toSeconds() + " s: given up on; its waits end at"
                    + " --timeout]")
                : new Result(r, c, outputs.get(r)));
        }
        return out;
    }

    @Override
    public void close()
    {
        for (final Thread t : threads)
        {
            t.interrupt();
        }
    }

    @Override
    public String describe(final int count)
    {
        return count + " ranks in this JVM (an engine each)";
    }
}
