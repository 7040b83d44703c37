package io.github.te4j.exchange;

/** The null rule of this package (package-info): a null argument is an IllegalArgumentException naming it. */
final class Checks
{
    private Checks()
    {
    }

    /** @return {@code value}; throws IllegalArgumentException "NAME is null" when it is null */
    static <T> T notNull(final T value, final String name)
    {
        if (value == null)
        {
            throw new IllegalArgumentException(name + " is null");
        }
        return value;
    }
}
