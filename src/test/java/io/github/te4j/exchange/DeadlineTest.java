package io.github.te4j.exchange;

import java.time.Duration;
import org.testng.Assert;
import org.testng.annotations.Test;

/** The one timeout rule: conversions saturate, never throw; a step past the deadline gets 1 ns, not 0. */
public class DeadlineTest
{
    @Test(groups = "host")
    public void conversionsSaturateInsteadOfThrowing()
    {
        final long forever = Deadline.FOREVER.toNanos();
        Assert.assertEquals(Deadline.toNanos(Duration.ofSeconds(Long.MAX_VALUE)), forever);
        Assert.assertEquals(Deadline.toNanos(Duration.ofSeconds(Long.MAX_VALUE, 999_999_999)), forever);
        Assert.assertEquals(Deadline.toNanos(Duration.ofNanos(Long.MAX_VALUE)), forever);
        Assert.assertEquals(Deadline.toNanos(Duration.ofNanos(-1)), 0);
        Assert.assertEquals(Deadline.toNanos(Duration.ofMillis(3)), 3_000_000);
        Assert.assertEquals(Deadline.toMillis(Duration.ofNanos(1)), 1, "rounded up: 1 ns is not a 0 ms (forever) socket timeout");
        Assert.assertEquals(Deadline.toMillis(Duration.ofSeconds(Long.MAX_VALUE)), forever / 1_000_000 + 1);
        Assert.assertTrue(Deadline.after(Duration.ofSeconds(Long.MAX_VALUE)).nanosLeft() > 0, "no overflow into the past");
        final IllegalArgumentException e = Assert.expectThrows(IllegalArgumentException.class, () -> Deadline.after(null));
        Assert.assertEquals(e.getMessage(), "timeout is null");
    }

    @Test(groups = "host")
    public void aPassedDeadlineGivesTheNextStepOneNanosecond()
    {
        final Deadline d = Deadline.after(Duration.ZERO);
        Assert.assertTrue(d.passed());
        Assert.assertEquals(d.left(), Duration.ofNanos(1));
        final Deadline later = Deadline.after(Duration.ofHours(1));
        Assert.assertFalse(later.passed());
        Assert.assertTrue(later.left().compareTo(Duration.ofHours(1)) <= 0 && later.left().compareTo(Duration.ofMinutes(59)) > 0);
    }
}
