"""A database URL that libpq cannot read is a message naming the setting, not a traceback."""

import pytest

from garage.db.connect import DatabaseError, connect


@pytest.mark.parametrize(
    "url",
    ["postgresql://me:secret@127.0.0.1:1/garage?passfile", "postgresql://127.0.0.1:1/x?nosuch=1"],
)
def test_a_malformed_url_names_the_setting_and_hides_the_password(url: str) -> None:
    with pytest.raises(DatabaseError) as caught:
        connect(url)
    message = str(caught.value)
    assert message.startswith("database.url (or GARAGE_DATABASE_URL) is not a PostgreSQL URL")
    assert "secret" not in message
