import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseVersionConstraint, versionSatisfies, type VersionConstraint } from './version-constraint.js';

const c = (text: string, kind: 'version' | 'semver' = 'version'): VersionConstraint => {
  const parsed = parseVersionConstraint(text, kind);
  assert.notEqual(typeof parsed, 'string', `${text}: ${String(parsed)}`);
  return parsed as VersionConstraint;
};

describe('version constraints (go-version syntax)', () => {
  it('compares lenient versions segment by segment, padding missing ones', () => {
    assert.equal(versionSatisfies(c('>= 3.10'), '3.10.0-1-amd64'), false, 'a pre-release-looking suffix is a pre-release to go-version');
    assert.equal(versionSatisfies(c('>= 3.10'), '4.19'), true);
    assert.equal(versionSatisfies(c('>= 1.2, < 2.0'), 'v1.9.9'), true);
    assert.equal(versionSatisfies(c('>= 1.2, < 2.0'), '2.0'), false);
    assert.equal(versionSatisfies(c('= 1.2'), '1.2.0'), true);
    assert.equal(versionSatisfies(c('!= 1.2'), '1.2.1'), true);
    assert.equal(versionSatisfies(c('1.10'), '1.9'), false, 'no operator means =, and 10 > 9 numerically');
  });

  it('takes the pessimistic operator ~> as go-version does', () => {
    assert.equal(versionSatisfies(c('~> 1.2'), '1.9'), true);
    assert.equal(versionSatisfies(c('~> 1.2'), '2.0'), false);
    assert.equal(versionSatisfies(c('~> 1.2.3'), '1.2.9'), true);
    assert.equal(versionSatisfies(c('~> 1.2.3'), '1.3.0'), false);
    assert.equal(versionSatisfies(c('~> 1.2.3'), '1.2.2'), false);
  });

  it('matches pre-releases with ordering operators only against a pre-release of the same release', () => {
    assert.equal(versionSatisfies(c('>= 1.0'), '1.5.0-beta1'), false);
    assert.equal(versionSatisfies(c('>= 1.5.0-alpha'), '1.5.0-beta1'), true);
    assert.equal(versionSatisfies(c('>= 1.4.0-alpha'), '1.5.0-beta1'), false);
  });

  it('says what is wrong with a malformed constraint', () => {
    assert.match(String(parseVersionConstraint('>= banana', 'version')), /"banana", which is not a version/);
    assert.match(String(parseVersionConstraint('=> 1.0', 'version')), /malformed clause|not a version/);
    assert.match(String(parseVersionConstraint('', 'version')), /empty/);
  });
});

describe('semver constraints (strict)', () => {
  it('takes only MAJOR.MINOR.PATCH versions', () => {
    assert.match(String(parseVersionConstraint('>= 1.2', 'semver')), /not a semantic version/);
    assert.match(String(parseVersionConstraint('~> 1.2.0', 'semver')), /~>/);
    assert.equal(versionSatisfies(c('>= 1.2.0', 'semver'), '1.2'), false, 'a node value that is not strict semver never matches');
  });

  it('orders pre-releases by the SemVer rules, without go-version\'s restriction', () => {
    assert.equal(versionSatisfies(c('>= 1.0.0', 'semver'), '1.5.0-beta.1'), true);
    assert.equal(versionSatisfies(c('< 1.5.0', 'semver'), '1.5.0-beta.1'), true);
    assert.equal(versionSatisfies(c('> 1.5.0-beta.2', 'semver'), '1.5.0-beta.11'), true, 'numeric identifiers compare numerically');
    assert.equal(versionSatisfies(c('> 1.5.0-beta', 'semver'), '1.5.0-alpha'), false);
    assert.equal(versionSatisfies(c('= 1.5.0', 'semver'), '1.5.0+build.7'), true, 'build metadata never counts');
  });
});
