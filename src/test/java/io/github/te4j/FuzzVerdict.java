package io.github.te4j;

/**
 * What one fuzz call is expected to do, set by the call before it touches the API, and how an
 * outcome is judged: a documented exception is a correct refusal; anything else is a violation.
 */
final class FuzzVerdict
{
    enum Expect
    {
        /** Valid arguments on open objects: must return normally (and correctly). */
        SUCCEED,
        /** Invalid arguments: must throw a documented exception. */
        FAIL,
        /** Either is correct (state-dependent, racing threads, forgeries that may equal the original). */
        EITHER
    }

    Expect expect = Expect.EITHER;
    String what = "?";
    /** The call went to the RDMA objects (counted apart in the figures). */
    boolean rdma;

    void set(final Expect e, final String description)
    {
        expect = e;
        what = description;
    }

    /**
     * The exceptions te4j documents for bad input, bad state and failed waits (IllegalStateException:
     * RdmaTransport's call-order errors, e.g. initialize twice or metadata before createQueuePairs).
     */
    static boolean documented(final Throwable t)
    {
        return t instanceof Te4jException || t instanceof IllegalArgumentException
            || t instanceof IndexOutOfBoundsException || t instanceof IllegalStateException
            || t instanceof io.github.te4j.rendezvous.RendezvousException;
    }

    /** null when the outcome is correct, otherwise why not. */
    String judge(final Throwable thrown)
    {
        if (thrown == null)
        {
            return expect == Expect.FAIL ? what + ": returned normally, expected a documented exception" : null;
        }
        if (!documented(thrown))
        {
            return what + ": undocumented " + thrown;
        }
        if (expect == Expect.SUCCEED)
        {
            return what + ": valid call threw " + thrown;
        }
        return null;
    }
}
