// Placeholder until the service lands.
