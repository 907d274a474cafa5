package io.kvrouter.core.auth;

import io.kvrouter.core.error.RoutingError;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The bearer tokens a router accepts and the roles each grants; decides a call's access. Tokens are kept and
 * compared as SHA-256 digests with {@link MessageDigest#isEqual} against every configured token, so neither the
 * matching token's position nor its length shows in the time a check takes.
 */
public final class AccessTokens {
  /** What a token may call: each service requires one role. */
  public enum Role {
    ROUTER, WORKERS, ADMIN;

    public static Role fromConfig(String value) {
      try {
        return valueOf(value.trim().toUpperCase(Locale.ROOT));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("unknown role '" + value + "' (roles: router, workers, admin)", e);
      }
    }
  }

  /** One configured token: its digest and its roles. */
  public record Grant(byte[] digest, Set<Role> roles) {
    public Grant {
      roles = Set.copyOf(roles);
    }
  }

  private final List<Grant> grants;

  private AccessTokens(List<Grant> grants) {
    this.grants = List.copyOf(grants);
  }

  /** A token and the roles it grants, as configured; the token itself is not kept. */
  public static Grant grant(String token, Set<Role> roles) {
    if (token == null || token.isBlank()) {
      throw new IllegalArgumentException("a configured token must not be empty");
    }
    if (roles.isEmpty()) {
      throw new IllegalArgumentException("a configured token must grant at least one role");
    }
    return new Grant(digest(token), EnumSet.copyOf(roles));
  }

  public static AccessTokens of(List<Grant> grants) {
    return new AccessTokens(grants);
  }

  public int size() {
    return grants.size();
  }

  /**
   * Null when {@code token} (null: the call carried none) grants {@code required}; else the rejection:
   * UNAUTHENTICATED MISSING_TOKEN or UNKNOWN_TOKEN, PERMISSION_DENIED MISSING_ROLE.
   */
  public RoutingError check(String token, Role required) {
    if (token == null) {
      return new RoutingError(RoutingError.Code.UNAUTHENTICATED, RoutingError.MISSING_TOKEN,
          "this service requires a bearer token (authorization: Bearer <token>)");
    }
    byte[] presented = digest(token);
    Grant found = null;
    for (Grant grant : grants) { // every one, whichever matches
      if (MessageDigest.isEqual(grant.digest(), presented)) {
        found = grant;
      }
    }
    if (found == null) {
      return new RoutingError(RoutingError.Code.UNAUTHENTICATED, RoutingError.UNKNOWN_TOKEN,
          "the bearer token is not one this router accepts");
    }
    if (!found.roles().contains(required)) {
      return new RoutingError(RoutingError.Code.PERMISSION_DENIED, RoutingError.MISSING_ROLE,
          "the bearer token lacks the role " + required.name().toLowerCase(Locale.ROOT) + " this service requires");
    }
    return null;
  }

  private static byte[] digest(String token) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is part of every JDK", e);
    }
  }
}
