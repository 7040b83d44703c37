package io.github.te4j;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.testng.Assert;
import org.testng.annotations.Test;

/**
 * A bad TE4J_TUNING is an error that names the valid knobs or values, not a silent fallback to
 * the defaults. The variable is read when libte4j loads, so each case runs in a child JVM.
 */
public class TuningEnvironmentTest
{
    @Test
    public void unknownKnobNamesTheKnobs() throws Exception
    {
        final String out = runWorker("nosuch=1");
        Assert.assertTrue(out.contains("unknown tuning knob 'nosuch'"), out);
        Assert.assertTrue(out.contains("put=base|"), out);
        Assert.assertTrue(out.contains("REFUSED"), out);
    }

    @Test
    public void badValueNamesTheValues() throws Exception
    {
        final String out = runWorker("signal=loud");
        Assert.assertTrue(out.contains("bad value 'loud' for tuning knob 'signal'; its values: atom|red"), out);
        Assert.assertTrue(out.contains("REFUSED"), out);
    }

    @Test
    public void putVariantIsTheBenchsNotTheLibrarys() throws Exception
    {
        final String out = runWorker("put=u8");
        Assert.assertTrue(out.contains("bad value 'u8' for tuning knob 'put'; its values: base|auto|ce|cesm"), out);
        Assert.assertTrue(out.contains("te4j-bench --variant"), out);
        Assert.assertTrue(out.contains("REFUSED"), out);
    }

    @Test
    public void validSpecIsAccepted() throws Exception
    {
        final String out = runWorker("signal=atom");
        Assert.assertTrue(out.contains("ACCEPTED"), out);
    }

    private static String runWorker(final String tuning) throws Exception
    {
        final ProcessBuilder pb = new ProcessBuilder(List.of(
            Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
            TuningEnvironmentWorker.class.getName()));
        pb.environment().put("TE4J_TUNING", tuning);
        pb.redirectErrorStream(true);
        final Process p = pb.start();
        final byte[] out = p.getInputStream().readAllBytes();
        Assert.assertTrue(p.waitFor(60, TimeUnit.SECONDS), "worker did not exit");
        return new String(out, StandardCharsets.UTF_8);
    }
}
