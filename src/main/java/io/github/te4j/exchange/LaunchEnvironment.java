package io.github.te4j.exchange;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * This process's place in a job, read from the variables its launcher set:
 * <table>
 *   <caption>conventions, first match wins</caption>
 *   <tr><th>launcher</th><th>rank</th><th>world size</th><th>local rank</th></tr>
 *   <tr><td>te4j</td><td>TE4J_RANK</td><td>TE4J_WORLD_SIZE</td><td>TE4J_LOCAL_RANK (optional, default: the rank)</td></tr>
 *   <tr><td>torchrun</td><td>RANK</td><td>WORLD_SIZE</td><td>LOCAL_RANK</td></tr>
 *   <tr><td>Open MPI</td><td>OMPI_COMM_WORLD_RANK</td><td>OMPI_COMM_WORLD_SIZE</td><td>OMPI_COMM_WORLD_LOCAL_RANK</td></tr>
 *   <tr><td>Slurm</td><td>SLURM_PROCID</td><td>SLURM_NTASKS</td><td>SLURM_LOCALID</td></tr>
 * </table>
 * The local rank picks the GPU ({@link #device()}). {@code TE4J_RENDEZVOUS} names where the ranks
 * meet; under torchrun without it, {@code tcp://MASTER_ADDR:(MASTER_PORT+1)}, one above the port
 * that torchrun's own store holds.
 *
 * <p>Launchers nest (torchrun started by srun sees Slurm's variables, which count nodes, not
 * processes): the innermost launcher in the table's order wins when the world sizes differ. Two
 * conventions that claim the same world size but a different rank or local rank contradict each
 * other, and te4j's own variables must agree with the launcher's they are set beside; either is
 * an error, as is a convention set only in part. Every error lists the variables it found.
 *
 * @param launcher which convention the values came from: te4j, torchrun, openmpi or slurm
 * @param rank this process's rank
 * @param worldSize the number of ranks
 * @param localRank this process's index among the ranks of its host
 * @param rendezvous the address of the job's exchange, when the environment names one
 * @param found every launcher variable that was set, in the table's order
 * @since 0.1
 */
public record LaunchEnvironment(String launcher, int rank, int worldSize, int localRank,
                                Optional<String> rendezvous, Map<String, String> found)
{
    /**
     * The rendezvous address variable.
     *
     * @since 0.1
     */
    public static final String TE4J_RENDEZVOUS = "TE4J_RENDEZVOUS";

    private static final String[][] CONVENTIONS = {
        {"te4j", "TE4J_RANK", "TE4J_WORLD_SIZE", "TE4J_LOCAL_RANK"},
        {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
        {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
        {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
    };
    private static final String[] OTHER = {TE4J_RENDEZVOUS, "MASTER_ADDR", "MASTER_PORT"};

    /**
     * Copies the map.
     *
     * @param launcher which convention the values came from: te4j, torchrun, openmpi or slurm
     * @param rank this process's rank
     * @param worldSize the number of ranks
     * @param localRank this process's index among the ranks of its host
     * @param rendezvous the address of the job's exchange, when the environment names one
     * @param found every launcher variable that was set, in the table's order
     * @since 0.1
     */
    public LaunchEnvironment
    {
        Checks.notNull(launcher, "launcher");
        Checks.notNull(rendezvous, "rendezvous");
        found = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(Checks.notNull(found, "found")));
    }

    /**
     * The GPU this rank should use.
     *
     * @return the GPU ordinal this rank uses: its local rank
     * @since 0.1
     */
    public int device()
    {
        return localRank;
    }

    /**
     * This process's place in the job, as its launcher's environment variables give it.
     *
     * @return this process's place, from {@link System#getenv()}
     * @throws IllegalStateException when no launcher's variables are set, or they are partial or contradict
     * @since 0.1
     */
    public static LaunchEnvironment fromEnvironment()
    {
        return fromEnvironment(System.getenv());
    }

    /**
     * The place in a job that {@code env} describes (for tests, or an environment read elsewhere).
     *
     * @param env the variables to read
     * @return the place they describe
     * @throws IllegalStateException when no launcher's variables are set, or they are partial or contradict
     * @since 0.1
     */
    public static LaunchEnvironment fromEnvironment(final Map<String, String> env)
    {
        Checks.notNull(env, "env");
        final Map<String, String> found = new LinkedHashMap<>();
        for (final String[] c : CONVENTIONS)
        {
            for (int i = 1; i < c.length; i++)
            {
                if (env.get(c[i]) != null)
                {
                    found.put(c[i], env.get(c[i]));
                }
            }
        }
        for (final String k : OTHER)
        {
            if (env.get(k) != null)
            {
                found.put(k, env.get(k));
            }
        }
        final List<int[]> complete = new ArrayList<>();
        final List<String> names = new ArrayList<>();
        for (final String[] c : CONVENTIONS)
        {
            final boolean te4j = c[0].equals("te4j");
            final List<String> present = new ArrayList<>();
            final List<String> missing = new ArrayList<>();
            for (int i = 1; i < c.length; i++)
            {
                (env.get(c[i]) != null ? present : missing).add(c[i]);
            }
            if (te4j)
            {
                missing.remove("TE4J_LOCAL_RANK");
            }
            if (present.isEmpty())
            {
                continue;
            }
            if (!missing.isEmpty())
            {
                throw new IllegalStateException(c[0] + " variables set only in part: " + present + " set, " + missing
                    + " missing; found " + found);
            }
            final int rank = number(env, c[1], found);
            final int world = number(env, c[2], found);
            final int local = env.get(c[3]) == null ? rank : number(env, c[3], found);
            if (world < 1 || rank < 0 || rank >= world)
            {
                throw new IllegalStateException(c[0] + ": rank " + rank + " is not in 0.." + (world - 1) + " (world size "
                    + world + "); found " + found);
            }
            if (local < 0 || local >= world)
            {
                throw new IllegalStateException(c[0] + ": local rank " + local + " is not in 0.." + (world - 1)
                    + "; found " + found);
            }
            complete.add(new int[] {rank, world, local});
            names.add(c[0]);
        }
        if (complete.isEmpty())
        {
            throw new IllegalStateException("no launcher variables set: expected TE4J_RANK and TE4J_WORLD_SIZE, "
                + "or those of torchrun (RANK, WORLD_SIZE, LOCAL_RANK), Open MPI (OMPI_COMM_WORLD_RANK, "
                + "OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK) or Slurm (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID)");
        }
        final int[] chosen = complete.get(0);
        for (int i = 1; i < complete.size(); i++)
        {
            final int[] other = complete.get(i);
            final boolean sameJob = other[1] == chosen[1];
            final boolean agrees = other[0] == chosen[0] && other[2] == chosen[2];
            if ((sameJob || names.get(0).equals("te4j")) && !agrees)
            {
                throw new IllegalStateException(names.get(0) + " and " + names.get(i) + " variables contradict: rank/world/local "
                    + chosen[0] + "/" + chosen[1] + "/" + chosen[2] + " against " + other[0] + "/" + other[1] + "/"
                    + other[2] + "; found " + found);
            }
        }
        Optional<String> rendezvous = Optional.ofNullable(env.get(TE4J_RENDEZVOUS));
        if (rendezvous.isEmpty() && names.get(0).equals("torchrun") && env.get("MASTER_ADDR") != null
            && env.get("MASTER_PORT") != null)
        {
            final int port = number(env, "MASTER_PORT", found);
            if (port < 1 || port >= 65535)
            {
                throw new IllegalStateException("MASTER_PORT " + port + " out of range; found " + found);
            }
            final String host = env.get("MASTER_ADDR");
            rendezvous = Optional.of("tcp://" + (host.contains(":") && !host.startsWith("[") ? "[" + host + "]" : host)
                + ":" + (port + 1));
        }
        return new LaunchEnvironment(names.get(0), chosen[0], chosen[1], chosen[2], rendezvous, found);
    }

    private static int number(final Map<String, String> env, final String key, final Map<String, String> found)
    {
        final String v = env.get(key).trim();
        try
        {
            return Integer.parseInt(v);
        }
        catch (final NumberFormatException e)
        {
            throw new IllegalStateException(key + " is not a number: '" + v + "'; found " + found, e);
        }
    }
}
