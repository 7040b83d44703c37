package io.github.te4j.bench;

import java.time.Duration;
import java.util.List;

/**
 * The ranks a {@link BenchLauncher} started, as child JVMs ({@link ChildJvmRanks}) or as threads
 * of the launcher's JVM ({@link InProcessRanks}); the launcher follows them the same way.
 */
interface LaunchedRanks extends AutoCloseable
{
    /** How one rank ended: its exit code (BenchMain's codes) and what it printed or threw. */
    final class Result
    {
        final int rank;
        final int exitCode;
        final String output;

        Result(final int rank, final int exitCode, final String output)
        {
            this.rank = rank;
            this.exitCode = exitCode;
            this.output = output;
        }
    }

    /** Whether a rank is still running. */
    boolean anyAlive();

    /**
     * Whether a rank ended with an error while the run goes on (then the others would only wait
     * for it until their timeouts). Rank 0's {@link BenchMain#EXIT_FAILED} is a failed check in
     * its rows, not a crash.
     */
    boolean crashed();

    /** Waits up to {@code timeout} for every rank to end; ranks still running are given up on then. */
    List<Result> await(Duration timeout) throws InterruptedException;

    /** Stops what still runs (child JVMs are killed; threads are interrupted and left to their deadlines). */
    @Override
    void close();

    /** A short text for the launcher's first line: how the ranks run. */
    String describe(int ranks);
}
