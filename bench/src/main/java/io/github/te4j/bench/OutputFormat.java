package io.github.te4j.bench;

/** How the result rows are written. */
public enum OutputFormat
{
    /** Aligned columns for people. */
    TABLE,
    /** One header line, then one line per row. */
    CSV,
    /** One object with the run's facts and an array of rows. */
    JSON
}
