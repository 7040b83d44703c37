package com.example;

import io.github.te4j.Availability;
import io.github.te4j.examples.TwoRankExample;

/** Prints what te4j can use here, then runs te4j's two-rank example (both ranks as child JVMs). */
public final class ConsumerMain
{
    private ConsumerMain()
    {
    }

    public static void main(final String[] args) throws Exception
    {
        System.out.println(Availability.describe());
        TwoRankExample.main(args);
    }
}
