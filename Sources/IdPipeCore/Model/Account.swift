/// One user account as it comes out of an export, before or after normalization.
///
/// Field names follow the `auth:export` JSON keys; timestamps are epoch milliseconds.
public struct Account: Sendable, Equatable {
    public var localId: String
    public var email: String?
    public var emailVerified: Bool
    public var passwordHash: String?
    public var salt: String?
    public var displayName: String?
    public var photoUrl: String?
    public var lastSignedInAt: Int64?
    public var createdAt: Int64?
    public var phoneNumber: String?
    public var disabled: Bool
    public var customAttributes: String?
    /// The raw JSON text of `mfaInfo`, kept verbatim for the import file.
    public var mfaInfoJSON: String?
    public var providers: [ProviderLink]

    public init(
        localId: String, email: String? = nil, emailVerified: Bool = false, passwordHash: String? = nil,
        salt: String? = nil, displayName: String? = nil, photoUrl: String? = nil, lastSignedInAt: Int64? = nil,
        createdAt: Int64? = nil, phoneNumber: String? = nil, disabled: Bool = false,
        customAttributes: String? = nil, mfaInfoJSON: String? = nil, providers: [ProviderLink] = []
    ) {
        self.localId = localId
        self.email = email
        self.emailVerified = emailVerified
        self.passwordHash = passwordHash
        self.salt = salt
        self.displayName = displayName
        self.photoUrl = photoUrl
        self.lastSignedInAt = lastSignedInAt
        self.createdAt = createdAt
        self.phoneNumber = phoneNumber
        self.disabled = disabled
        self.customAttributes = customAttributes
        self.mfaInfoJSON = mfaInfoJSON
        self.providers = providers
    }

    public func provider(_ id: String) -> ProviderLink? {
        providers.first { $0.providerId == id }
    }

    public func isLinked(to id: String) -> Bool {
        providers.contains { $0.providerId == id }
    }
}

/// A `providerUserInfo` entry: the link between an account and one identity provider.
public struct ProviderLink: Sendable, Equatable {
    public var providerId: String
    public var rawId: String
    public var email: String?
    public var displayName: String?
    public var photoUrl: String?

    public init(providerId: String, rawId: String, email: String? = nil, displayName: String? = nil, photoUrl: String? = nil) {
        self.providerId = providerId
        self.rawId = rawId
        self.email = email
        self.displayName = displayName
        self.photoUrl = photoUrl
    }
}
