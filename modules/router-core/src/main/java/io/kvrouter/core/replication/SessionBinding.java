package io.kvrouter.core.replication;

import io.kvrouter.core.model.Rank;

/**
 * A session bound to a rank, as the admission state keeps it and its replicas copy it: {@code boundAtMillis} is when
 * the session was bound to this rank, {@code lastUsedMillis} its last Book, {@code expiresAtMillis} when it ends if
 * no Book of the session comes first (its last Book plus the model's idle TTL).
 */
public record SessionBinding(String sessionId, Rank rank, long boundAtMillis, long lastUsedMillis,
    long expiresAtMillis) {}
