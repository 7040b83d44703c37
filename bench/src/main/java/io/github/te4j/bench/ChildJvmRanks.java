package io.github.te4j.bench;

import io.github.te4j.launcher.RankProcesses;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;

/** Every rank a child JVM (same java, same class path; NVLink multicast kept off by {@link RankProcesses}). */
final class ChildJvmRanks implements LaunchedRanks
{
    private final RankProcesses ranks = new RankProcesses();

    ChildJvmRanks(final int count, final List<String> jvmArgs, final IntFunction<List<String>> args)
    {
        try
        {
            ranks.start(count, BenchMain.class.getName(), jvmArgs, args::apply);
        }
        catch (final RuntimeException e)
        {
            ranks.close();
            throw e;
        }
    }

    @Override
    public boolean anyAlive()
    {
        return ranks.processes().stream().anyMatch(Process::isAlive);
    }

    @Override
    public boolean crashed()
    {
        final List<Process> ps = ranks.processes();
        for (int r = 0; r < ps.size(); r++)
        {
            final Process p = ps.get(r);
            if (!p.isAlive() && p.exitValue() != 0 && !(r == 0 && p.exitValue() == BenchMain.EXIT_FAILED))
            {
                return true;
            }
        }
        return false;
    }

    @Override
    public List<Result> await(final Duration timeout) throws InterruptedException
    {
        final List<Result> out = new ArrayList<>();
        for (final RankProcesses.Result r : ranks.await(timeout))
        {
            out.add(new Result(r.rank, r.exitCode, r.output));
        }
        return out;
    }

    @Override
    public void close()
    {
        ranks.close();
    }

    @Override
    public String describe(final int count)
    {
        return count + " ranks as child JVMs";
    }
}
