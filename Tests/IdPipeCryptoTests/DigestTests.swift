import Testing
import IdPipeCrypto

@Suite struct DigestTests {
    @Test func sha256KnownAnswers() {
        #expect(SHA256Hasher.hexDigest("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256Hasher.hexDigest("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func digestSoFarLetsHashingGoOn() {
        let hasher = SHA256Hasher()
        hasher.update(Array("a".utf8))
        _ = hasher.digestSoFar()
        hasher.update(Array("bc".utf8))
        #expect(hasher.hexDigestSoFar() == SHA256Hasher.hexDigest("abc"))
    }

    @Test func hmacSHA256RFC4231Case2() {
        let mac = HMACSHA256.mac(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(Hex.encode(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }
}
