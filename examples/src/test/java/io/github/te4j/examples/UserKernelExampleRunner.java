package io.github.te4j.examples;

/** Test access to the package-private steps of {@link UserKernelExample}. */
public final class UserKernelExampleRunner
{
    private UserKernelExampleRunner()
    {
    }

    public static String missingPrerequisite(final int device0, final int device1)
    {
        return UserKernelExample.missingPrerequisite(new int[] {device0, device1});
    }

    public static String kernels()
    {
        return UserKernelExample.KERNELS;
    }

    public static int launchBoth(final String devices) throws InterruptedException
    {
        return UserKernelExample.launchBoth(devices);
    }
}
