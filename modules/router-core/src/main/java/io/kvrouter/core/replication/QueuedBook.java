package io.kvrouter.core.replication;

/**
 * A Book waiting in the owner's admission queue, as the owner's copies keep it: enough for the next incarnation to
 * answer its caller if the owner's ends with the Book still queued (UNAVAILABLE {@code RECOVERING}, retryable).
 * The request itself is not copied: a recovered queue is answered, not resumed.
 *
 * @param replyTo where the caller waits for the answer, opaque to core (the actor's serialized reply address)
 */
public record QueuedBook(String requestId, long nonce, String replyTo, String policyClass, long enqueuedAtMillis) {}
