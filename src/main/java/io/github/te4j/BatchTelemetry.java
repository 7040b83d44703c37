package io.github.te4j;

import io.github.te4j.telemetry.BatchCompleteEvent;
import io.github.te4j.telemetry.BatchSubmitEvent;

/**
 * A {@link TransferBatch}'s JFR events: one per submitted part, and one when every request is
 * final, counted by state. Each is made only while a recording wants it, so a batch pays nothing
 * for them otherwise. Used under the batch's monitor.
 */
final class BatchTelemetry
{
    /** Asks whether a recording wants BatchComplete events (the setting is the event type's). */
    private static final BatchCompleteEvent COMPLETE_PROBE = new BatchCompleteEvent();

    private final TransferAgent agent;
    private final long batchId;
    /** Begun at the first submit while a recording wants it, committed when every request is final. */
    private BatchCompleteEvent completeEvent;

    BatchTelemetry(final TransferAgent agent, final long batchId)
    {
        this.agent = agent;
        this.batchId = batchId;
    }

    /** The submit's event (begun before its checks), and the start of the completion's at the first part. */
    void submitted(final BatchSubmitEvent event, final boolean firstPart, final int first, final int n,
        final BatchRequests requests)
    {
        if (firstPart && COMPLETE_PROBE.isEnabled())
        {
            final BatchCompleteEvent c = new BatchCompleteEvent();
            c.begin();
            completeEvent = c;
        }
        if (event.shouldCommit())
        {
            long bytes = 0;
            for (int i = first; i < first + n; i++)
            {
                bytes += requests.length(i);
            }
            event.agent = agent.segmentName();
            event.platform = agent.platform().name();
            event.batchId = batchId;
            event.first = first;
            event.requests = n;
            event.bytes = bytes;
            event.commit();
        }
    }

    /** Whether {@link #completed} would commit an event: only then are the states counted. */
    boolean wantsCompletion()
    {
        final BatchCompleteEvent c = completeEvent;
        if (c != null && !c.shouldCommit())
        {
            completeEvent = null;
        }
        return completeEvent != null;
    }

    /**
     * Every request is final: the completion's event.
     *
     * @param byState how many requests ended in each state, by {@link TransferState#ordinal()}
     */
    void completed(final int[] byState, final int requests)
    {
        final BatchCompleteEvent c = completeEvent;
        completeEvent = null;
        c.agent = agent.segmentName();
        c.platform = agent.platform().name();
        c.batchId = batchId;
        c.requests = requests;
        c.completed = byState[TransferState.COMPLETED.ordinal()];
        c.failed = byState[TransferState.FAILED.ordinal()];
        c.timedOut = byState[TransferState.TIMEOUT.ordinal()];
        c.cancelled = byState[TransferState.CANCELLED.ordinal()];
        c.commit();
    }
}
