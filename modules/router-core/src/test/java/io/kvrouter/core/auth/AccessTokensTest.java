package io.kvrouter.core.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvrouter.core.auth.AccessTokens.Role;
import io.kvrouter.core.error.RoutingError;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class AccessTokensTest {
  private final AccessTokens tokens = AccessTokens.of(List.of(
      AccessTokens.grant("fleet", Set.of(Role.WORKERS)),
      AccessTokens.grant("ops", Set.of(Role.ADMIN, Role.WORKERS))));

  @Test
  void aTokenWithTheRolePasses() {
    assertThat(tokens.check("fleet", Role.WORKERS)).isNull();
    assertThat(tokens.check("ops", Role.ADMIN)).isNull();
    assertThat(tokens.check("ops", Role.WORKERS)).isNull();
  }

  @Test
  void noTokenIsUnauthenticated() {
    RoutingError error = tokens.check(null, Role.WORKERS);
    assertThat(error.code()).isEqualTo(RoutingError.Code.UNAUTHENTICATED);
    assertThat(error.reason()).isEqualTo(RoutingError.MISSING_TOKEN);
  }

  @Test
  void anUnknownTokenIsUnauthenticated() {
    for (String unknown : List.of("flee", "fleet ", "FLEET", "fleetx", "")) {
      RoutingError error = tokens.check(unknown, Role.WORKERS);
      assertThat(error.code()).isEqualTo(RoutingError.Code.UNAUTHENTICATED);
      assertThat(error.reason()).isEqualTo(RoutingError.UNKNOWN_TOKEN);
      assertThat(error.message()).doesNotContain(unknown.isEmpty() ? "\u0000" : unknown);
    }
  }

  @Test
  void aKnownTokenWithoutTheRoleIsDenied() {
    RoutingError error = tokens.check("fleet", Role.ADMIN);
    assertThat(error.code()).isEqualTo(RoutingError.Code.PERMISSION_DENIED);
    assertThat(error.reason()).isEqualTo(RoutingError.MISSING_ROLE);
    assertThat(error.message()).contains("admin");
  }

  @Test
  void configuredTokensMustBeNonEmptyAndGrantARole() {
    assertThatThrownBy(() -> AccessTokens.grant(" ", Set.of(Role.ADMIN))).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> AccessTokens.grant("t", Set.of())).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Role.fromConfig("root")).hasMessageContaining("router, workers, admin");
    assertThat(Role.fromConfig(" Workers ")).isEqualTo(Role.WORKERS);
  }
}
