package io.github.te4j.exchange;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import java.util.Map;
import java.util.Optional;
import org.testng.annotations.Test;

public class LaunchEnvironmentTest
{
    @Test
    public void te4jVariables()
    {
        final LaunchEnvironment e = LaunchEnvironment.fromEnvironment(Map.of("TE4J_RANK", "3", "TE4J_WORLD_SIZE", "8",
            "TE4J_LOCAL_RANK", "1", "TE4J_RENDEZVOUS", "etcd://10.0.0.1:2379/job"));
        assertEquals(e.launcher(), "te4j");
        assertEquals(e.rank(), 3);
        assertEquals(e.worldSize(), 8);
        assertEquals(e.device(), 1);
        assertEquals(e.rendezvous(), Optional.of("etcd://10.0.0.1:2379/job"));
    }

    @Test
    public void te4jLocalRankDefaultsToTheRank()
    {
        final LaunchEnvironment e = LaunchEnvironment.fromEnvironment(Map.of("TE4J_RANK", "2", "TE4J_WORLD_SIZE", "4"));
        assertEquals(e.localRank(), 2);
        assertEquals(e.rendezvous(), Optional.empty());
    }

    @Test
    public void torchrunVariablesAndItsMasterAddress()
    {
        final LaunchEnvironment e = LaunchEnvironment.fromEnvironment(Map.of("RANK", "5", "WORLD_SIZE", "16",
            "LOCAL_RANK", "5", "MASTER_ADDR", "node0", "MASTER_PORT", "29500"));
        assertEquals(e.launcher(), "torchrun");
        assertEquals(e.rank(), 5);
        assertEquals(e.worldSize(), 16);
        assertEquals(e.device(), 5);
        // one above the port torchrun's own store listens on
        assertEquals(e.rendezvous(), Optional.of("tcp://node0:29501"));
    }

    @Test
    public void te4jRendezvousOverridesTheMasterAddress()
    {
        final LaunchEnvironment e = LaunchEnvironment.fromEnvironment(Map.of("RANK", "0", "WORLD_SIZE", "2",
            "LOCAL_RANK", "0", "MASTER_ADDR", "node0", "MASTER_PORT", "29500", "TE4J_RENDEZVOUS", "file:///shared/x"));
        assertEquals(e.rendezvous(), Optional.of("file:///shared/x"));
    }

    @Test
    public void slurmVariables()
    {
        final LaunchEnvironment e = LaunchEnvironment.fromEnvironment(Map.of("SLURM_PROCID", "9", "SLURM_NTASKS", "12",
            "SLURM_LOCALID", "3"));
        assertEquals(e.launcher(), "slurm");
        assertEquals(e.rank(), 9);
        assertEquals(e.worldSize(), 12);
        assertEquals(e.device(), 3);
    }

    @Test
    public void openMpiVariables()
    {
        final LaunchEnvironment e = LaunchEnvironment.fromEnvironment(Map.of("OMPI_COMM_WORLD_RANK", "1",
            "OMPI_COMM_WORLD_SIZE", "2", "OMPI_COMM_WORLD_LOCAL_RANK", "0"));
        assertEquals(e.launcher(), "openmpi");
        assertEquals(e.rank(), 1);
        assertEquals(e.worldSize(), 2);
        assertEquals(e.device(), 0);
    }

    @Test
    public void mpirunUnderSlurmAgreesAndTheInnerLauncherIsNamed()
    {
        final LaunchEnvironment e = LaunchEnvironment.fromEnvironment(Map.of("OMPI_COMM_WORLD_RANK", "3",
            "OMPI_COMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_LOCAL_RANK", "1", "SLURM_PROCID", "3", "SLURM_NTASKS", "4",
            "SLURM_LOCALID", "1"));
        assertEquals(e.launcher(), "openmpi");
        assertEquals(e.rank(), 3);
    }

    @Test
    public void torchrunUnderSlurmCountsProcessesNotNodes()
    {
        // srun started one torchrun per node (2 tasks); torchrun started 8 processes per node
        final LaunchEnvironment e = LaunchEnvironment.fromEnvironment(Map.of("RANK", "11", "WORLD_SIZE", "16",
            "LOCAL_RANK", "3", "SLURM_PROCID", "1", "SLURM_NTASKS", "2", "SLURM_LOCALID", "0"));
        assertEquals(e.launcher(), "torchrun");
        assertEquals(e.rank(), 11);
        assertEquals(e.worldSize(), 16);
        assertEquals(e.device(), 3);
    }

    @Test
    public void aHalfSetEnvironmentListsWhatItFound()
    {
        final IllegalStateException e = expectThrows(IllegalStateException.class, () ->
            LaunchEnvironment.fromEnvironment(Map.of("RANK", "1", "MASTER_ADDR", "node0")));
        assertTrue(e.getMessage().contains("torchrun variables set only in part"), e.getMessage());
        assertTrue(e.getMessage().contains("WORLD_SIZE") && e.getMessage().contains("LOCAL_RANK"), e.getMessage());
        assertTrue(e.getMessage().contains("RANK=1") && e.getMessage().contains("MASTER_ADDR=node0"), e.getMessage());
    }

    @Test
    public void aHalfSetTe4jEnvironmentIsAnError()
    {
        final IllegalStateException e = expectThrows(IllegalStateException.class, () ->
            LaunchEnvironment.fromEnvironment(Map.of("TE4J_WORLD_SIZE", "4", "SLURM_PROCID", "0", "SLURM_NTASKS", "4",
                "SLURM_LOCALID", "0")));
        assertTrue(e.getMessage().contains("te4j variables set only in part") && e.getMessage().contains("TE4J_RANK"),
            e.getMessage());
    }

    @Test
    public void contradictingLaunchersAreAnError()
    {
        final IllegalStateException e = expectThrows(IllegalStateException.class, () ->
            LaunchEnvironment.fromEnvironment(Map.of("OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "4",
                "OMPI_COMM_WORLD_LOCAL_RANK", "1", "SLURM_PROCID", "2", "SLURM_NTASKS", "4", "SLURM_LOCALID", "2")));
        assertTrue(e.getMessage().contains("openmpi and slurm variables contradict"), e.getMessage());
        assertTrue(e.getMessage().contains("OMPI_COMM_WORLD_RANK=1") && e.getMessage().contains("SLURM_PROCID=2"),
            e.getMessage());
    }

    @Test
    public void te4jVariablesMustAgreeWithTheLauncher()
    {
        final IllegalStateException e = expectThrows(IllegalStateException.class, () ->
            LaunchEnvironment.fromEnvironment(Map.of("TE4J_RANK", "0", "TE4J_WORLD_SIZE", "2", "RANK", "1",
                "WORLD_SIZE", "8", "LOCAL_RANK", "1")));
        assertTrue(e.getMessage().contains("te4j and torchrun variables contradict"), e.getMessage());
    }

    @Test
    public void outOfRangeAndMalformedValuesAreErrors()
    {
        assertTrue(expectThrows(IllegalStateException.class, () -> LaunchEnvironment.fromEnvironment(Map.of(
            "TE4J_RANK", "4", "TE4J_WORLD_SIZE", "4"))).getMessage().contains("rank 4 is not in 0..3"));
        assertTrue(expectThrows(IllegalStateException.class, () -> LaunchEnvironment.fromEnvironment(Map.of(
            "RANK", "x", "WORLD_SIZE", "4", "LOCAL_RANK", "0"))).getMessage().contains("RANK is not a number: 'x'"));
        assertTrue(expectThrows(IllegalStateException.class, () -> LaunchEnvironment.fromEnvironment(Map.of(
            "SLURM_PROCID", "0", "SLURM_NTASKS", "4", "SLURM_LOCALID", "-1"))).getMessage().contains("local rank -1"));
    }

    @Test
    public void noLauncherAtAllSaysWhatItLooksFor()
    {
        final IllegalStateException e = expectThrows(IllegalStateException.class,
            () -> LaunchEnvironment.fromEnvironment(Map.of("HOME", "/root")));
        assertTrue(e.getMessage().contains("TE4J_RANK") && e.getMessage().contains("SLURM_PROCID"), e.getMessage());
    }
}
