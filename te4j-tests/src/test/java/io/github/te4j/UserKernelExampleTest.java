package io.github.te4j;

import io.github.te4j.examples.UserKernelExampleRunner;
import org.testng.Assert;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * The user-kernel example end to end: two rank processes sharing GPU 0, kernels compiled by
 * NVRTC and launched from Java. Skips with the reason without a GPU or NVRTC.
 */
@Test(groups = {"cuda", "cuda-kernels"})
public class UserKernelExampleTest
{
    @Test(timeOut = 300_000)
    public void bothRanksOnOneGpu() throws Exception
    {
        final String missing = UserKernelExampleRunner.missingPrerequisite(0, 0);
        if (missing != null)
        {
            throw new SkipException(missing);
        }
        Assert.assertEquals(UserKernelExampleRunner.launchBoth("0,0"), 0, "the example failed (its output is above)");
    }
}
